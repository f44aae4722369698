// SPDX-License-Identifier: Apache-2.0
// Entry point of the CPU suite (always runs).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
