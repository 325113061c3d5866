# Runs snapkv-studio headless and checks that the screenshot exists and is a 1600x1000 PNG.
file(REMOVE ${OUT})
execute_process(COMMAND ${EXE} --model ${MODEL} --document ${DOCUMENT} --question "Who was in the story?"
                        --run --budget 96 --max-tokens 8 --view compare --screenshot ${OUT}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 280)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "snapkv-studio exited with ${rc}\n${out}\n${err}")
endif()
include(${CMAKE_CURRENT_LIST_DIR}/check_png.cmake)
