# Included by the screenshot checks: fails unless ${OUT} is a 1600x1000 PNG (width and height are
# the big-endian words at bytes 16..23 of the IHDR chunk).
if(NOT EXISTS ${OUT})
  message(FATAL_ERROR "no screenshot written at ${OUT}")
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
