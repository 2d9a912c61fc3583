"""`python -m transformer.model.hf`: the import command (`transformer.model.hf.command`)."""

import sys

from transformer.model.hf.command import main

sys.exit(main())
