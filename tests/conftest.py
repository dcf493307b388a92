import sys
from pathlib import Path

# Tests import their plumbing as `helpers`.
sys.path.insert(0, str(Path(__file__).resolve().parent))
