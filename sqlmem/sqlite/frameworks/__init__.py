"""The frameworks' storage in the agent's file: key-value items and LangGraph
checkpoints."""
