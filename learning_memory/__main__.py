import sys

from learning_memory.cli.main import main

sys.exit(main())
