"""Figure 4b says why a tool speedup is flat across temperatures (issue 62, friction 3).

On the embedded model the main job's tool speedup was the same at T = 0, 0.3 and 1.0: its tool calls are
token-identical at every temperature (the model is that sure of them; at T = 5 they change, so the temperature is
applied), while its sampled speak chunks change. The figure's table and the figure say so, from the runs' own
output tokens; when every output is the same at every temperature they say to check that the temperature was applied.
"""

from table_runs import chunk, write_run

from ticktock.tables import load_results
from ticktock.tables.analysis import FIXED_COLUMN, fig4b_data, fig4b_table
from ticktock.tables.figures import fig4b_annotations

TEMPERATURES = (0.0, 0.3, 1.0)


def runs(folder, speak_changes: bool = True, tool_changes: bool = False):
    """ar and speclisten at each temperature: one speak and one FDB v3 tool chunk; speclisten 2x faster on tools."""
    for t in TEMPERATURES:
        speak_ids = [1, 2, int(10 * t)] if speak_changes else [1, 2, 3]
        tool_ids = [5, 6, int(10 * t)] if tool_changes else [5, 6, 7]
        for decoder, tool_ms in (("ar", 1000.0), ("speclisten", 500.0)):
            rows = [chunk("s", 0, kind="speak", post_audio_ms=300.0, output_token_ids=speak_ids),
                    chunk("t", 0, task="fdb_v3", kind="tool", post_audio_ms=tool_ms, output_token_ids=tool_ids)]
            write_run(folder / f"{decoder}_{t}", decoder, rows, temperature=t)
    return load_results([str(folder)])


def test_identical_tool_calls_at_every_temperature_are_said_beside_the_flat_speedup(tmp_path):
    results = runs(tmp_path)
    data = fig4b_data(results)
    tool = data[data["kind"] == "tool"]
    assert tool["speedup"].tolist() == [2.0, 2.0, 2.0] and tool[FIXED_COLUMN].all()
    assert not data.loc[data["kind"] == "speak", FIXED_COLUMN].any()
    table = fig4b_table(results, "ar", data)
    assert FIXED_COLUMN not in table.frame.columns
    said = [n for n in table.notes if "token-identical at every temperature" in n]
    assert len(said) == 1 and "tool calls" in said[0] and "T=0, 0.3, 1" in said[0]
    assert "speak chunks do change" in said[0]
    assert fig4b_annotations(data) == {"tool": "ar's tool calls token-identical at every T"}


def test_tool_calls_that_change_with_temperature_get_no_such_note(tmp_path):
    results = runs(tmp_path, tool_changes=True)
    data = fig4b_data(results)
    assert not data[FIXED_COLUMN].any()
    assert not any("token-identical at every temperature" in n for n in fig4b_table(results, "ar", data).notes)
    assert fig4b_annotations(data) == {}


def test_every_output_the_same_at_every_temperature_asks_to_check_the_temperature(tmp_path):
    results = runs(tmp_path, speak_changes=False)
    notes = fig4b_table(results, "ar").notes
    assert any("every output" in n and "check that the temperature was applied" in n for n in notes)
