"""`python -m roofline`."""

from .cli import main

main()
