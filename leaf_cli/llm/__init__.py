"""Chat formats (render + parse) and engines. Engines are imported lazily by `leaf_cli.llm.spec`."""
