#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Stands in for python3 in the tests that need it when the build was configured without one
# (tests/CMakeLists.txt): each such test fails and says why, instead of vanishing from the run.
echo "FAILED: this test needs python3, which was not found when the build was configured (install python3 and re-run cmake)" >&2
exit 1
