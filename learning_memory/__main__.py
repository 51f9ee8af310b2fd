import sys

from learning_memory.server.cli.main import main

sys.exit(main())
