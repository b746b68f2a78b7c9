; Definitions and imports for JavaScript (infill contextpack).
(function_declaration name: (identifier) @name) @def.function
(generator_function_declaration name: (identifier) @name) @def.function
(class_declaration name: (_) @name) @def.class
(method_definition name: (_) @name) @def.method
(field_definition property: (_) @name) @def.field
(program (lexical_declaration (variable_declarator name: (identifier) @name)) @def.var)
(program (variable_declaration (variable_declarator name: (identifier) @name)) @def.var)
(program (export_statement declaration: (lexical_declaration (variable_declarator name: (identifier) @name)) @def.var))
(program (export_statement declaration: (variable_declaration (variable_declarator name: (identifier) @name)) @def.var))
(import_statement source: (string (string_fragment) @import))
(export_statement source: (string (string_fragment) @import))
(call_expression function: (identifier) @import.reqfn arguments: (arguments . (string (string_fragment) @import.req)))
; Locals: parameters and variables declared in functions.
(formal_parameters (identifier) @local)
(statement_block (lexical_declaration (variable_declarator name: (identifier) @local)))
(statement_block (variable_declaration (variable_declarator name: (identifier) @local)))
(for_in_statement left: (identifier) @local)
(arrow_function parameter: (identifier) @local)
