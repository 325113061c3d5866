# The Evaluate tab rendered headless from a results file: `snapkv needle` writes a tiny grid, then
# snapkv-studio --results ... --view evaluate --screenshot must write a 1600x1000 PNG.
file(REMOVE ${OUT} ${RESULTS})
execute_process(COMMAND ${CLI} needle --model ${MODEL} --haystack ${HAYSTACK} --lengths 96,128 --depths 0,50,100
                        --policies snapkv,streaming --budgets 48 --window 16 --kernel 5 --max-tokens 4 --quiet
                        --out ${RESULTS}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 200)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "snapkv needle exited with ${rc}\n${out}\n${err}")
endif()
execute_process(COMMAND ${EXE} --model ${MODEL} --results ${RESULTS} --view evaluate --screenshot ${OUT}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 200)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "snapkv-studio exited with ${rc}\n${out}\n${err}")
endif()
include(${CMAKE_CURRENT_LIST_DIR}/check_png.cmake)
