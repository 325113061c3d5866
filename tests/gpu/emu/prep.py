"""Rewrite a kernels/*.cu file into C++ for the CPU emulation (emu_cuda.h): dynamic shared memory
and the <<<...>>> launches, the two things a C++ compiler cannot take. Usage: prep.py IN.cu OUT.cpp"""
import re, sys
src, dst = sys.argv[1], sys.argv[2]
s = open(src).read()
s = s.replace("extern __shared__ float smem[];", "float* smem = emu::dyn_smem<float>();")
s, n = re.subn(r'(\w+(?:<\w+>)?)<<<(.*?)>>>\((.*?)\);', r'emu::launch(\1, \2, \3);', s, flags=re.S)
if "<<<" in s:
    sys.exit(f"{src}: a kernel launch was not rewritten")
open(dst, "w").write(s)
