/**
 * Python: one module of dataclasses, one per object type, each with `from_dict` (validates
 * required members, basic types, enums and the simple constraints, and keeps unknown members in
 * `extra`) and `to_dict`; string enums as `Literal`s; and `parse_message(obj)`, which dispatches
 * on `type` to the class of that message. Python 3.10 or later (dataclass kw_only).
 */
import { declOf, type Constraints, type Decl, type Model, type TypeRef } from './model.ts';
import { HEADER } from './python-runtime.ts';

function pyString(s: string): string {
  return JSON.stringify(s);
}

/** A JSON scalar as a Python literal. */
function pyLiteral(v: unknown): string {
  if (v === null) return 'None';
  if (v === true) return 'True';
  if (v === false) return 'False';
  return JSON.stringify(v);
}

function pyDoc(s: string): string {
  return s.replace(/\\/g, '\\\\').replace(/"""/g, '\\"\\"\\"');
}

/** Generates the Python module; `tap_types.py`. */
export function generatePython(model: Model): Map<string, string> {
  const patterns = new Map<string, string>();
  const patternConst = (re: string): string => {
    let name = patterns.get(re);
    if (!name) {
      name = `_P${patterns.size + 1}`;
      patterns.set(re, name);
    }
    return name;
  };
  let lambdaDepth = 0;

  const annotation = (t: TypeRef): string => {
    switch (t.k) {
      case 'string':
        return 'str';
      case 'integer':
        return 'int';
      case 'number':
        return 'float';
      case 'boolean':
        return 'bool';
      case 'null':
        return 'None';
      case 'any':
        return 'Any';
      case 'array':
        return `List[${annotation(t.items)}]`;
      case 'map':
        return `Dict[str, ${annotation(t.values)}]`;
      case 'nullable':
        return `Optional[${annotation(t.inner)}]`;
      case 'ref':
        return t.name;
    }
  };

  const constraintArgs = (c: Constraints, kind: 'string' | 'integer' | 'number'): string => {
    const args: string[] = [];
    if (kind === 'string') {
      if (c.pattern !== undefined) args.push(`pattern=${patternConst(c.pattern)}`);
      if (c.minLength !== undefined) args.push(`min_length=${c.minLength}`);
      if (c.maxLength !== undefined) args.push(`max_length=${c.maxLength}`);
      if (c.format !== undefined) args.push(`fmt=${pyString(c.format)}`);
    } else {
      if (c.minimum !== undefined) args.push(`minimum=${c.minimum}`);
      if (c.maximum !== undefined) args.push(`maximum=${c.maximum}`);
    }
    return args.length ? `, ${args.join(', ')}` : '';
  };

  /** A Python expression that validates and converts `v` at JSON Pointer `p`. */
  const convert = (t: TypeRef, v: string, p: string): string => {
    switch (t.k) {
      case 'string':
        if (t.alternatives) {
          const alts = t.alternatives.map((a) =>
            'const' in a ? `lambda v, p: _enum(v, p, (${pyString(a.const)},))` : `lambda v, p: _str(v, p${constraintArgs(a, 'string')})`,
          );
          return `_one_of(${v}, ${p}, ${alts.join(', ')})`;
        }
        return `_str(${v}, ${p}${constraintArgs(t.c, 'string')})`;
      case 'integer':
        return `_int(${v}, ${p}${constraintArgs(t.c, 'integer')})`;
      case 'number':
        return `_num(${v}, ${p}${constraintArgs(t.c, 'number')})`;
      case 'boolean':
        return `_bool(${v}, ${p})`;
      case 'null':
        return `_null(${v}, ${p})`;
      case 'any':
        return v;
      case 'nullable':
        return `(None if ${v} is None else ${convert(t.inner, v, p)})`;
      case 'array':
      case 'map': {
        const d = ++lambdaDepth;
        const inner = convert(t.k === 'array' ? t.items : t.values, `x${d}`, `q${d}`);
        lambdaDepth--;
        const item = `lambda x${d}, q${d}: ${inner}`;
        if (t.k === 'map') return `_map(${v}, ${p}, ${item})`;
        const extra = [
          t.c.minItems !== undefined ? `min_items=${t.c.minItems}` : '',
          t.c.maxItems !== undefined ? `max_items=${t.c.maxItems}` : '',
          t.c.uniqueItems ? 'unique=True' : '',
        ].filter(Boolean);
        return `_list(${v}, ${p}, ${item}${extra.length ? `, ${extra.join(', ')}` : ''})`;
      }
      case 'ref': {
        const d = declOf(model, t.name);
        if (d.kind === 'object') return `${d.name}.from_dict(${v}, ${p})`;
        return `_v_${d.name}(${v}, ${p})`;
      }
    }
  };

  /** Whether JSON null is a valid value (then an absent optional member is ABSENT, not None). */
  const holdsNull = (t: TypeRef): boolean => t.k === 'any' || t.k === 'null' || t.k === 'nullable';

  const out: string[] = [];
  const messageOf = new Map(model.messages.map((m) => [m.struct, m.type]));

  for (const d of model.decls) out.push(declaration(d));

  function declaration(d: Decl): string {
    switch (d.kind) {
      case 'enum':
        return (
          `${d.name} = Literal[${d.values.map(pyString).join(', ')}]\n` +
          (d.description ? `"""${pyDoc(d.description)}"""\n` : '') +
          `_E_${d.name} = (${d.values.map(pyString).join(', ')}${d.values.length === 1 ? ',' : ''})\n\n\n` +
          `def _v_${d.name}(v: Any, p: str) -> str:\n    return _enum(v, p, _E_${d.name})\n`
        );
      case 'alias':
        return (
          `${d.name} = ${annotation(d.type)}\n` +
          (d.description ? `"""${pyDoc(d.description)}"""\n` : '') +
          `\n\ndef _v_${d.name}(v: Any, p: str) -> ${annotation(d.type)}:\n    return ${convert(d.type, 'v', 'p')}\n`
        );
      case 'union':
        return (
          `${d.name} = Union[${d.variants.map(annotation).join(', ')}]\n` +
          (d.description ? `"""${pyDoc(d.description)}"""\n` : '') +
          `\n\ndef _v_${d.name}(v: Any, p: str) -> ${d.name}:\n    return _one_of(v, p, ${d.variants.map((x) => `lambda v, p: ${convert(x, 'v', 'p')}`).join(', ')})\n`
        );
      case 'object': {
        const messageType = messageOf.get(d.name);
        const lines: string[] = ['@dataclass(kw_only=True)', `class ${d.name}:`, `    """${pyDoc(d.description || d.name)}"""`, ''];
        for (const f of d.fields) {
          if (f.name === 'type' && messageType) {
            lines.push(`    type: Literal[${pyString(messageType)}] = ${pyString(messageType)}`);
            continue;
          }
          const ann = annotation(f.type);
          if (f.required) lines.push(`    ${f.name}: ${ann}`);
          else if (holdsNull(f.type)) lines.push(`    ${f.name}: ${ann} = ABSENT`);
          else lines.push(`    ${f.name}: Optional[${ann}] = None`);
          if (f.description) lines.push(`    """${pyDoc(f.description)}"""`);
        }
        lines.push(
          '    extra: Dict[str, Any] = field(default_factory=dict)',
          '    """Members the schema does not name, kept as they came."""',
          '',
        );
        const required = d.fields.filter((f) => f.required).map((f) => pyString(f.name));
        lines.push(`    _MEMBERS = (${d.fields.map((f) => pyString(f.name)).join(', ')}${d.fields.length === 1 ? ',' : ''})`, '');
        lines.push('    @classmethod', `    def from_dict(cls, obj: Any, path: str = "") -> "${d.name}":`, '        o = _obj(obj, path)');
        if (required.length) lines.push(`        _require(o, (${required.join(', ')}${required.length === 1 ? ',' : ''}), path)`);
        for (const [key, deps] of Object.entries(d.dependentRequired)) {
          lines.push(`        if ${pyString(key)} in o:`, `            _require(o, (${deps.map(pyString).join(', ')},), path)`);
        }
        for (const c of d.conditions) {
          lines.push(`        if o.get(${pyString(c.when)}, ABSENT) in (${c.values.map(pyLiteral).join(', ')},):`);
          if (c.require.length) lines.push(`            _require(o, (${c.require.map(pyString).join(', ')},), path)`);
          for (const f of c.forbid)
            lines.push(
              `            if ${pyString(f)} in o:`,
              `                raise ValidationError(path + ${pyString(`/${f}`)}, ${pyString(`not allowed when ${c.when} is ${c.values.join(' or ')}`)})`,
            );
          if (c.requireOne.length)
            lines.push(
              `            if not any(k in o for k in (${c.requireOne.map(pyString).join(', ')},)):`,
              `                raise ValidationError(path, ${pyString(`one of ${c.requireOne.join(', ')} is required when ${c.when} is ${c.values.join(' or ')}`)})`,
            );
        }
        if (messageType)
          lines.push(
            `        if o["type"] != ${pyString(messageType)}:`,
            `            raise ValidationError(path + "/type", "expected ${messageType}")`,
          );
        lines.push('        return cls(');
        for (const f of d.fields) {
          if (f.name === 'type' && messageType) continue;
          const p = `path + ${pyString(`/${f.name}`)}`;
          const expr = convert(f.type, `o[${pyString(f.name)}]`, p);
          lines.push(
            f.required
              ? `            ${f.name}=${expr},`
              : `            ${f.name}=${expr} if ${pyString(f.name)} in o else ${holdsNull(f.type) ? 'ABSENT' : 'None'},`,
          );
        }
        lines.push('            extra={k: v for k, v in o.items() if k not in cls._MEMBERS},', '        )', '');
        lines.push(
          '    def to_dict(self) -> Dict[str, Any]:',
          '        """The JSON object form; absent optional members are left out."""',
          '        out: Dict[str, Any] = {}',
        );
        for (const f of d.fields) {
          if (f.required) lines.push(`        out[${pyString(f.name)}] = _dump(self.${f.name})`);
          else
            lines.push(
              `        if self.${f.name} is not ${holdsNull(f.type) ? 'ABSENT' : 'None'}:`,
              `            out[${pyString(f.name)}] = _dump(self.${f.name})`,
            );
        }
        lines.push('        out.update(self.extra)', '        return out', '');
        return lines.join('\n');
      }
    }
  }

  const dispatcher = [
    `Message = Union[${model.messages.map((m) => m.struct).join(', ')}]`,
    '"""Any TAP 1.0 message; `type` tells which."""',
    '',
    'MESSAGE_TYPES: Dict[str, Any] = {',
    ...model.messages.map((m) => `    ${pyString(m.type)}: ${m.struct},`),
    '}',
    '"""The class of each message type."""',
    '',
    '',
    'def parse_message(obj: Any) -> Message:',
    '    """Checks a decoded JSON object and returns the instance of its message type."""',
    '    o = _obj(obj, "")',
    '    t = o.get("type")',
    '    if not isinstance(t, str):',
    '        raise ValidationError("/type", "missing or not a string")',
    '    cls = MESSAGE_TYPES.get(t)',
    '    if cls is None:',
    '        raise ValidationError("/type", f"unknown message type {t!r}")',
    '    return cls.from_dict(o, "")',
    '',
    '',
    'def parse_message_json(text: str) -> Message:',
    '    """parse_message of one JSON text, which must be I-JSON (see loads)."""',
    '    return parse_message(loads(text))',
    '',
  ].join('\n');

  const patternLines = [...patterns].map(([re, name]) => `${name} = re.compile(${pyRegex(re)})`).join('\n');
  const text = `${HEADER}\n\n${patternLines}\n\n\n${out.join('\n\n')}\n\n${dispatcher}`;
  return new Map([['tap_types.py', text.replace(/\n{4,}/g, '\n\n\n')]]);
}

/**
 * A JSON Schema (ECMA-262) pattern as a Python string literal; a final bare `$` means the end of
 * the string (`\Z`). TAP's patterns end with `$(?!\n)`, which Python reads the same way already.
 */
function pyRegex(re: string): string {
  return JSON.stringify(re.replace(/(?<!\\)\$$/, '\\Z'));
}
