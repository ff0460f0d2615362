import sys

from coze_lab.cli import main

sys.exit(main())
