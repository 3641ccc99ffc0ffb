"""Unit tests import the collection's module_utils from the installed collection path."""

import sys

from helpers import collections_root

sys.path.insert(0, str(collections_root()))
