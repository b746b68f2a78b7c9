; Definitions and imports for TypeScript and TSX (infill contextpack).
(function_declaration name: (identifier) @name) @def.function
(generator_function_declaration name: (identifier) @name) @def.function
(function_signature name: (identifier) @name) @def.function
(class_declaration name: (_) @name) @def.class
(abstract_class_declaration name: (_) @name) @def.class
(interface_declaration name: (_) @name) @def.class
(enum_declaration name: (_) @name) @def.class
(type_alias_declaration name: (_) @name) @def.type
(internal_module name: (_) @name) @def.module
(method_definition name: (_) @name) @def.method
(method_signature name: (_) @name) @def.method
(abstract_method_signature name: (_) @name) @def.method
(public_field_definition name: (_) @name) @def.field
(property_signature name: (_) @name) @def.field
(program (lexical_declaration (variable_declarator name: (identifier) @name)) @def.var)
(program (variable_declaration (variable_declarator name: (identifier) @name)) @def.var)
(program (export_statement declaration: (lexical_declaration (variable_declarator name: (identifier) @name)) @def.var))
(program (export_statement declaration: (variable_declaration (variable_declarator name: (identifier) @name)) @def.var))
(import_statement source: (string (string_fragment) @import))
(export_statement source: (string (string_fragment) @import))
(call_expression function: (identifier) @import.reqfn arguments: (arguments . (string (string_fragment) @import.req)))
; Locals: parameters and variables declared in functions.
(statement_block (lexical_declaration (variable_declarator name: (identifier) @local)))
(statement_block (variable_declaration (variable_declarator name: (identifier) @local)))
(for_in_statement left: (identifier) @local)
(arrow_function parameter: (identifier) @local)
(required_parameter pattern: (identifier) @local)
(optional_parameter pattern: (identifier) @local)
