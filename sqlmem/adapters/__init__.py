"""sqlmem behind the storage interfaces of agent frameworks (guide: docs/adapters.md).

Each adapter is its own module and optional extra, and imports its framework (the
Anthropic memory tool handler needs none: it runs on plain dicts):

    pip install "sqlmem[openai-agents]"   # sqlmem.adapters.openai_agents.SqlmemSession
    pip install "sqlmem[langchain]"       # sqlmem.adapters.langchain.SqlmemChatMessageHistory,
                                          #   SqlmemByteStore
    pip install "sqlmem[langgraph]"       # sqlmem.adapters.langgraph.SqlmemStore,
                                          #   SqlmemSaver
    # no extra needed:                    # sqlmem.adapters.anthropic.SqlmemMemoryTool
    pip install "sqlmem[anthropic]"       #   and sdk_memory_tool, for the SDK's runner

This package itself imports nothing, so `import sqlmem` and `import sqlmem.adapters` never
load a framework.
"""
