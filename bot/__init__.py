"""The quiz engine, storage, reminders and the Telegram, Discord and terminal adapters."""
