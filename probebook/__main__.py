import sys

from probebook.cli import main

sys.exit(main())
