; Definitions and imports for Java (infill contextpack).
(class_declaration name: (identifier) @name) @def.class
(interface_declaration name: (identifier) @name) @def.class
(enum_declaration name: (identifier) @name) @def.class
(record_declaration name: (identifier) @name) @def.class
(annotation_type_declaration name: (identifier) @name) @def.class
(method_declaration name: (identifier) @name) @def.method
(constructor_declaration name: (identifier) @name) @def.method
(field_declaration declarator: (variable_declarator name: (identifier) @name)) @def.field
(constant_declaration declarator: (variable_declarator name: (identifier) @name)) @def.field
(enum_constant name: (identifier) @name) @def.field
(import_declaration) @import.java
(package_declaration) @package
; Locals: parameters and local variables.
(formal_parameter name: (identifier) @local)
(local_variable_declaration declarator: (variable_declarator name: (identifier) @local))
(enhanced_for_statement name: (identifier) @local)
(catch_formal_parameter name: (identifier) @local)
