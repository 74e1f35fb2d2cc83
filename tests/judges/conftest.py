import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "tables"))  # table_runs: hand-made run folders


@pytest.fixture(scope="session")
def judge_model(tmp_path_factory):
    from judge_model import write_judge_model

    return write_judge_model(tmp_path_factory.mktemp("judge-model"))


@pytest.fixture(scope="session")
def plain_judge_model(judge_model, tmp_path_factory):
    """The same model with a tokenizer that has no chat template."""
    from judge_model import without_chat_template

    folder = tmp_path_factory.mktemp("plain-judge-model") / "model"
    shutil.copytree(judge_model, folder)
    return without_chat_template(folder)
