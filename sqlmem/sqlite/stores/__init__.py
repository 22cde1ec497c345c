"""The stores' SQL side: facts, history, documents, vectors and the searches
over them, each as statements run on the core's connections."""
