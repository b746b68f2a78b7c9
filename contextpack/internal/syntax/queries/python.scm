; Definitions and imports for Python (infill contextpack).
(class_definition name: (identifier) @name) @def.class
(function_definition name: (identifier) @name) @def.function
(module (expression_statement (assignment left: (identifier) @name) @def.var))
(class_definition body: (block (expression_statement (assignment left: (identifier) @name) @def.field)))
(import_statement) @import.py
(import_from_statement) @import.pyfrom
; Locals: parameters, assignments and loop variables (not looked up as definitions).
(parameters (identifier) @local)
(default_parameter name: (identifier) @local)
(typed_parameter (identifier) @local)
(typed_default_parameter name: (identifier) @local)
(assignment left: (identifier) @local)
(pattern_list (identifier) @local)
(for_statement left: (identifier) @local)
(as_pattern alias: (as_pattern_target (identifier) @local))
(lambda_parameters (identifier) @local)
