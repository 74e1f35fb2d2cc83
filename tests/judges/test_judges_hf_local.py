"""judge=hf_local: a real tiny transformers model on disk grades replies 1-5, deterministically, offline."""

import json

import pytest

from ticktock.judges.base import JudgeError, Reply
from ticktock.judges.hf_local import LocalJudge, check_template, file_digest, scale_token_ids

REPLIES = [Reply("run", "s0", "llama_questions", 0, "What is the capital of France?", "It is Paris.", ("Paris",)),
           Reply("run", "s1", "alpaca_eval", 0, "Give me a tip for a gift.", "A good knife.", ()),
           Reply("run", "s2", "llama_questions", 1, "And of Italy?", "", ("Rome", "roma"))]


def cpu_judge(folder, **options):
    return LocalJudge(path=str(folder), device="cpu", dtype="float32", **options)


@pytest.mark.parametrize("model", ["judge_model", "plain_judge_model"])
def test_scores_are_expected_ratings_within_1_to_5(model, request):
    verdicts = cpu_judge(request.getfixturevalue(model), batch_size=2).judge(REPLIES)
    assert len(verdicts) == len(REPLIES)
    for v in verdicts:
        assert 1.0 <= v.score <= 5.0 and len(v.probabilities) == 5
        assert sum(v.probabilities) == pytest.approx(1.0)
        assert v.score == pytest.approx(sum(p * k for p, k in zip(v.probabilities, range(1, 6))))
        assert 0.0 < v.scale_mass <= 1.0 and v.note == ""


def test_two_invocations_give_the_same_scores_whatever_the_batch_size(judge_model):
    first = [v.score for v in cpu_judge(judge_model, batch_size=3).judge(REPLIES)]
    again = [v.score for v in cpu_judge(judge_model, batch_size=3).judge(REPLIES)]
    one_by_one = [v.score for v in cpu_judge(judge_model, batch_size=1).judge(REPLIES)]
    assert first == again
    assert one_by_one == pytest.approx(first, abs=1e-5)  # left padding with each prompt's own positions


def test_the_prompt_has_the_request_reply_reference_and_the_chat_template(judge_model, plain_judge_model):
    judge = cpu_judge(judge_model)
    tokenizer, _ = judge._loaded()
    text = tokenizer.decode(judge.prompt_ids(REPLIES[0], REPLIES[0].reply))
    assert text.startswith("<|im_start|>user\n") and text.endswith("<|im_start|>assistant\n")
    assert "What is the capital of France?" in text and "It is Paris." in text and "[Reference answer]\nParis" in text
    without = tokenizer.decode(judge.prompt_ids(REPLIES[1], REPLIES[1].reply))
    assert "[Reference answer]" not in without
    silent = tokenizer.decode(judge.prompt_ids(REPLIES[2], REPLIES[2].reply))
    assert "(the assistant said nothing)" in silent and "Rome (also accepted: roma)" in silent
    plain = cpu_judge(plain_judge_model)
    plain_text = plain._loaded()[0].decode(plain.prompt_ids(REPLIES[0], REPLIES[0].reply))
    assert "<|im_start|>" not in plain_text and plain_text.endswith("\n\nRating:\n")


def test_a_long_reply_is_cut_from_the_left_with_a_note(judge_model):
    long = Reply("run", "s0", "alpaca_eval", 0, "Tell me about Paris.", " ".join(f"word{i}" for i in range(300)))
    judge = cpu_judge(judge_model, max_prompt_tokens=700)
    ids, note = judge.fitted_prompt(long)
    assert len(ids) <= 700 and note.startswith("reply cut from the left to its last ")
    assert "(judge.max_prompt_tokens=700)" in note
    assert "word299" in judge._loaded()[0].decode(ids) and "word0 " not in judge._loaded()[0].decode(ids)
    [verdict] = judge.judge([long])
    assert verdict.note == note and 1 <= verdict.score <= 5
    with pytest.raises(JudgeError, match=r"judge.max_prompt_tokens: 100 tokens cannot hold the grading prompt of session s0"):
        cpu_judge(judge_model, max_prompt_tokens=100).judge([long])


def test_options_that_change_verdicts_change_the_fingerprint(judge_model):
    base = cpu_judge(judge_model).fingerprint()
    assert cpu_judge(judge_model).fingerprint() == base == cpu_judge(judge_model, batch_size=1).fingerprint()
    assert cpu_judge(judge_model, max_prompt_tokens=512).fingerprint() != base
    assert cpu_judge(judge_model, template="Rate 1-5: {reply}").fingerprint() != base
    assert LocalJudge(path=str(judge_model), device="cpu", dtype="bfloat16").fingerprint() != base


def test_a_checkpoint_saved_over_the_same_large_file_changes_its_digest(tmp_path):
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(bytes(3 << 20))
    before = file_digest(weights)
    with open(weights, "r+b") as handle:
        handle.write(b"\x01")
    assert file_digest(weights) != before and before.startswith(f"{3 << 20}:")


def test_a_missing_or_unusable_path_is_one_clear_error(tmp_path):
    with pytest.raises(JudgeError, match=r"^judge.path: not set: pass judge.path=<folder"):
        LocalJudge(path=None, device="cpu")
    missing = tmp_path / "nowhere"
    with pytest.raises(JudgeError, match=rf"^judge.path: {missing}: no such folder .*nothing is downloaded"):
        LocalJudge(path=str(missing), device="cpu")
    (tmp_path / "empty").mkdir()
    with pytest.raises(JudgeError, match=r"empty: no config.json \(not a transformers model folder\)"):
        LocalJudge(path=str(tmp_path / "empty"), device="cpu")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text(json.dumps({"model_type": "llama"}))
    with pytest.raises(JudgeError, match=rf"^judge.path: {broken}: cannot load a transformers causal LM and its tokenizer"):
        LocalJudge(path=str(broken), device="cpu").judge(REPLIES[:1])


def test_bad_options_name_their_key(judge_model):
    with pytest.raises(JudgeError, match=r"^judge.device: must be auto, cpu, cuda or cuda:K, got 'tpu'"):
        LocalJudge(path=str(judge_model), device="tpu")
    with pytest.raises(JudgeError, match=r"^judge.dtype: must be one of auto, "):
        LocalJudge(path=str(judge_model), device="cpu", dtype="int8")
    with pytest.raises(JudgeError, match=r"^judge.batch_size: must be an integer >= 1, got 0"):
        LocalJudge(path=str(judge_model), device="cpu", batch_size=0)
    with pytest.raises(JudgeError, match=r"no \{reply\} field"):
        check_template("Rate {request}")


def test_a_tokenizer_without_single_digit_tokens_is_refused(tmp_path):
    class Pieces:
        unk_token_id = None

        def encode(self, text, add_special_tokens=False):
            return [7, 8] if text == "3" else [int(text)]

    with pytest.raises(JudgeError, match=r"does not encode '3' as one known token \(it gives the ids \[7, 8\]\)"):
        scale_token_ids(Pieces(), tmp_path, [1, 2, 3, 4, 5])
