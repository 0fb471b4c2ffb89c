"""Model clients: the Chat Completions client (`openai_chat`), stream assembly (`stream`),
model/endpoint resolution (`resolve`). Imports nothing here, so `openai` loads only on first use."""
