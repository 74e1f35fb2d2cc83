"""The world the sessions talk to, and how replies are judged against it.

``mock_tools``: the deterministic tool world (a catalogue, orders, bookings) that answers the model's tool calls
during a replay and that the corpus synthesizer draws its requests from. ``scoring``: the rule-based task scores
(QA answer match, tool calls, turn-taking) that the quality table and the judges read.
"""
