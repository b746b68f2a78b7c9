; Definitions and includes for C++ (infill contextpack).
(function_definition declarator: (function_declarator declarator: (identifier) @name)) @def.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))) @def.function
(function_definition declarator: (reference_declarator (function_declarator declarator: (identifier) @name))) @def.function
(function_definition declarator: (function_declarator declarator: (field_identifier) @name)) @def.method
(function_definition declarator: (function_declarator declarator: (qualified_identifier) @name)) @def.method
(function_definition declarator: (function_declarator declarator: (destructor_name) @name)) @def.method
(function_definition declarator: (function_declarator declarator: (operator_name) @name)) @def.method
(declaration declarator: (function_declarator declarator: (identifier) @name)) @def.proto
(declaration declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))) @def.proto
(field_declaration declarator: (function_declarator declarator: (field_identifier) @name)) @def.method
(class_specifier name: (type_identifier) @name body: (_)) @def.class
(struct_specifier name: (type_identifier) @name body: (_)) @def.class
(union_specifier name: (type_identifier) @name body: (_)) @def.class
(enum_specifier name: (type_identifier) @name body: (_)) @def.class
(namespace_definition name: (_) @name) @def.module
(type_definition declarator: (type_identifier) @name) @def.type
(alias_declaration name: (type_identifier) @name) @def.type
(preproc_def name: (identifier) @name) @def.macro
(preproc_function_def name: (identifier) @name) @def.macro
(enumerator name: (identifier) @name) @def.field
(field_declaration declarator: (field_identifier) @name) @def.field
(preproc_include path: (_) @import)
; Locals: parameters and variables declared in function bodies.
(parameter_declaration declarator: (identifier) @local)
(parameter_declaration declarator: (pointer_declarator declarator: (identifier) @local))
(compound_statement (declaration declarator: (identifier) @local))
(compound_statement (declaration declarator: (init_declarator declarator: (identifier) @local)))
(compound_statement (declaration declarator: (init_declarator declarator: (pointer_declarator declarator: (identifier) @local))))
(for_range_loop declarator: (identifier) @local)
