"""Model clients for ``ctx.model_call``: adapters for the official OpenAI and Anthropic SDKs
(:mod:`perdure.providers.openai`, :mod:`perdure.providers.anthropic`, installed with the
``openai`` and ``anthropic`` extras and imported only when used), a scripted model for tests and
demos (:mod:`perdure.providers.scripted`), and a local server that speaks both providers' wire
formats for tests (:mod:`perdure.providers.stub`). Nothing here is imported by ``import
perdure``."""
