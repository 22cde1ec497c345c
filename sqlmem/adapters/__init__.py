"""sqlmem behind the storage interfaces of agent frameworks (SPEC 18).

Each adapter is its own module and optional extra, and imports its framework:

    pip install "sqlmem[openai-agents]"   # sqlmem.adapters.openai_agents.SqlmemSession
    pip install "sqlmem[langchain]"       # sqlmem.adapters.langchain.SqlmemChatMessageHistory,
                                          #   SqlmemByteStore
    pip install "sqlmem[langgraph]"       # sqlmem.adapters.langgraph.SqlmemStore

This package itself imports nothing, so `import sqlmem` and `import sqlmem.adapters` never
load a framework.
"""
