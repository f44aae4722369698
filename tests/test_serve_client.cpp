// SPDX-License-Identifier: Apache-2.0
// (being written)
#include <doctest/doctest.h>
