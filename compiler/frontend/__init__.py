"""Frontend: the .tile lexer, parser, AST, semantic checks and IR generation."""
