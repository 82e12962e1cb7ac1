import sys

from optimizer.cli import main

sys.exit(main())
