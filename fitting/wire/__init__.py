"""Provider wire shapes, read into the neutral transcript model and written back:
the Anthropic Messages API (``anthropic``), OpenAI Chat Completions (``openai``),
OpenAI Responses items (``responses``), and request bodies of either dialect
(``bodies``). File formats that hold these shapes are in ``windowfit.fitting.formats``."""
