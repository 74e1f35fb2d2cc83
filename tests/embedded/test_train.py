import argparse

import pytest

from ticktock.embedded.train import task_weight


def test_task_weight_values_are_parsed_and_bad_ones_named():
    assert task_weight("fdb_v3=2") == ("fdb_v3", 2)
    for bad in ("fdb_v3", "fdb_v3=", "=2", "fdb_v3=0", "fdb_v3=1.5"):
        with pytest.raises(argparse.ArgumentTypeError, match=repr(bad)):
            task_weight(bad)
