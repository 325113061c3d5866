# Runs snapkv-studio headless and checks that the screenshot exists and is a 1600x1000 PNG
# (width and height are the big-endian words at bytes 16..23 of the IHDR chunk).
file(REMOVE ${OUT})
execute_process(COMMAND ${EXE} --model ${MODEL} --document ${DOCUMENT} --question "Who was in the story?"
                        --run --budget 96 --max-tokens 8 --view compare --screenshot ${OUT}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 280)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "snapkv-studio exited with ${rc}\n${out}\n${err}")
endif()
if(NOT EXISTS ${OUT})
  message(FATAL_ERROR "no screenshot written at ${OUT}\n${err}")
endif()
file(READ ${OUT} magic LIMIT 8 HEX)
if(NOT magic STREQUAL "89504e470d0a1a0a")
  message(FATAL_ERROR "${OUT} is not a PNG (magic ${magic})")
endif()
file(READ ${OUT} size OFFSET 16 LIMIT 8 HEX)
if(NOT size STREQUAL "00000640000003e8")
  message(FATAL_ERROR "${OUT} is not 1600x1000 (IHDR size words ${size})")
endif()
message(STATUS "screenshot ok: ${OUT}")
