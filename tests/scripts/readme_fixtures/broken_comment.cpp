// SPDX-License-Identifier: Apache-2.0
// A source with one stale path in a comment (CTest doc_references_refuses); this file is wrong on
// purpose, so doc_references does not read it in its normal run. The engine's operation is in
// src/engine/no_such_operation.cpp.
/* These exist: src/cli/session.hpp and kernels/, and docs/design.md, "The layers". */
// How it was chosen: docs/design.md, "No such section".
const char* data = "// src/engine/not_a_comment.cpp";  // a string literal is test data, not a pointer
const char* raw = R"(a raw string's lines are data too:
// src/engine/in_a_raw_string.cpp
)";
