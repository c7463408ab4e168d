#!/usr/bin/env python3
"""Each argument is a valid PNG of the benchmark plots' documented size."""
import sys

from PIL import Image

SIZE = (1200, 940)
sizes = []
for path in sys.argv[1:]:
    Image.open(path).verify()
    sizes.append(Image.open(path).size)
if not sizes or any(s != SIZE for s in sizes):
    sys.exit(f"plots of the wrong size or none: {sizes}, expected {SIZE}")
print("plots ok", sizes)
