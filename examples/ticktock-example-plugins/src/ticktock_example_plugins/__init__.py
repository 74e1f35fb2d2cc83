"""Example TickTock plug-ins: a decoder (``pool_rank``) and a model adapter (``lws_fixture``).

Each lives in its own module, so selecting one never imports the other: ``pool_rank`` needs only
``ticktock.api``; ``lws_fixture`` imports torch and transformers when it builds the model.
"""
