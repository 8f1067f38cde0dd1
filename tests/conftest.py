"""Shared set-up of the workbench unit tests: import path and fixtures."""
import importlib.machinery
import importlib.util
import os
import sys

WORKBENCH = os.path.join(os.path.dirname(__file__), "..", "workbench")
FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
sys.path.insert(0, WORKBENCH)
# The benchmarks import their own modules (benchlib: nic_irqs).
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))


def fixture_text(name):
    with open(os.path.join(FIXTURES, name)) as fp:
        return fp.read()


def load_script(name, path):
    """Import the script at PATH as module NAME; the loader is named
    explicitly because some scripts have no .py suffix or a hyphen."""
    loader = importlib.machinery.SourceFileLoader(name, path)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
    loader.exec_module(module)
    return module
