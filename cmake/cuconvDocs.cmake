# SPDX-License-Identifier: Apache-2.0
# The man page and the bash/zsh completions, generated at build time from the built binary's
# --help and --list-filters (packaging/gen-man.sh with help2man, packaging/gen-completions.sh), so
# they cannot drift from the command line. CTest `docs_match_help` checks the result.
find_program(CUCONV_HELP2MAN help2man)
set(cuconv_docs_dir "${PROJECT_BINARY_DIR}/docs")
set(cuconv_docs_outputs "${cuconv_docs_dir}/cuconv.bash" "${cuconv_docs_dir}/_cuconv")
add_custom_command(
  OUTPUT "${cuconv_docs_dir}/cuconv.bash" "${cuconv_docs_dir}/_cuconv"
  COMMAND ${CMAKE_COMMAND} -E env CUCONV_SERVER=never  # this build's help, not a running server's
          bash "${PROJECT_SOURCE_DIR}/packaging/gen-completions.sh" "$<TARGET_FILE:cuconv>" "${cuconv_docs_dir}"
  DEPENDS cuconv cuconv-engine "${PROJECT_SOURCE_DIR}/packaging/gen-completions.sh"  # the engine prints the help
  COMMENT "Generating bash and zsh completions from cuconv --help" VERBATIM)
if(CUCONV_HELP2MAN)
  add_custom_command(
    OUTPUT "${cuconv_docs_dir}/cuconv.1" "${cuconv_docs_dir}/cuconv.1.gz"
    COMMAND ${CMAKE_COMMAND} -E env CUCONV_SERVER=never
            bash "${PROJECT_SOURCE_DIR}/packaging/gen-man.sh" "$<TARGET_FILE:cuconv>" "${PROJECT_VERSION}" "${cuconv_docs_dir}"
    DEPENDS cuconv cuconv-engine "${PROJECT_SOURCE_DIR}/packaging/gen-man.sh" "${PROJECT_SOURCE_DIR}/packaging/cuconv.h2m"
    COMMENT "Generating the man page cuconv.1 from cuconv --help (help2man)" VERBATIM)
  list(APPEND cuconv_docs_outputs "${cuconv_docs_dir}/cuconv.1" "${cuconv_docs_dir}/cuconv.1.gz")
  install(FILES "${cuconv_docs_dir}/cuconv.1.gz" DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT Runtime)
else()
  message(WARNING "help2man not found: no man page (scripts/install-deps.sh installs it)")
endif()
add_custom_target(cuconv_docs ALL DEPENDS ${cuconv_docs_outputs})

# Debian's bash-completion and zsh look in these folders (zsh: vendor-completions is on Debian's
# default fpath; elsewhere add the folder to fpath or set this to share/zsh/site-functions).
set(CUCONV_INSTALL_ZSH_COMPLETIONDIR "${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions" CACHE STRING
    "Where the zsh completion _cuconv goes, relative to the prefix")
install(FILES "${cuconv_docs_dir}/cuconv.bash" RENAME cuconv
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions COMPONENT Runtime)
install(FILES "${cuconv_docs_dir}/_cuconv" DESTINATION ${CUCONV_INSTALL_ZSH_COMPLETIONDIR} COMPONENT Runtime)

# Registered without help2man too: it then fails, naming the missing man page.
if(CUCONV_BUILD_TESTS)
  add_test(NAME docs_match_help
           COMMAND bash "${PROJECT_SOURCE_DIR}/packaging/check-docs.sh" "$<TARGET_FILE:cuconv>"
                   "${cuconv_docs_dir}/cuconv.1" "${cuconv_docs_dir}/cuconv.bash" "${cuconv_docs_dir}/_cuconv"
                   "${PROJECT_SOURCE_DIR}/include/cuconv/error.hpp")
  # In-process, under the decoy of tests/CMakeLists.txt like every test.
  set_tests_properties(docs_match_help PROPERTIES LABELS cpu ENVIRONMENT CUCONV_SERVER=never FIXTURES_REQUIRED decoy)
endif()
