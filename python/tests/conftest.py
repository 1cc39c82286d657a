import sys
from pathlib import Path

# The package beside these tests (python/durable_rl_torch), without installing it.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
