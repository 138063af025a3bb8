import sys

from samplepkg.tool import double

print("pkg main", __name__, sys.argv[1:], double(21))
