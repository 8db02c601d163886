"""The Telegram adapter: python-telegram-bot on the shared event loop.

``transport.TelegramTransport`` is what ``trapbot run`` starts; ``handlers`` turns updates into
engine calls, ``delivery`` sends the engine's replies within Telegram's limits, ``format``
renders the engine's Markdown subset as Telegram HTML and ``sequencing`` keeps each user's
updates in order while different users are served concurrently.
"""
