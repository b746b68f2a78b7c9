; Definitions and imports for Python (infill contextpack).
(class_definition name: (identifier) @name) @def.class
(function_definition name: (identifier) @name) @def.function
(module (expression_statement (assignment left: (identifier) @name) @def.var))
(class_definition body: (block (expression_statement (assignment left: (identifier) @name) @def.field)))
(import_statement) @import.py
(import_from_statement) @import.pyfrom
