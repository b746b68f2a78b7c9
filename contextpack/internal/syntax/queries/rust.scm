; Definitions and imports for Rust (infill contextpack).
(function_item name: (identifier) @name) @def.function
(function_signature_item name: (identifier) @name) @def.method
(struct_item name: (type_identifier) @name) @def.class
(enum_item name: (type_identifier) @name) @def.class
(union_item name: (type_identifier) @name) @def.class
(trait_item name: (type_identifier) @name) @def.class
(type_item name: (type_identifier) @name) @def.type
(const_item name: (identifier) @name) @def.const
(static_item name: (identifier) @name) @def.const
(mod_item name: (identifier) @name) @def.module
(macro_definition name: (identifier) @name) @def.macro
(impl_item type: (_) @name) @def.impl
(field_declaration name: (field_identifier) @name) @def.field
(enum_variant name: (identifier) @name) @def.field
(use_declaration argument: (_) @import)
; Locals: parameters and let bindings.
(parameter pattern: (identifier) @local)
(let_declaration pattern: (identifier) @local)
(closure_parameters (identifier) @local)
(for_expression pattern: (identifier) @local)
