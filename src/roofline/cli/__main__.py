"""`python -m roofline.cli`."""

from . import main

main()
