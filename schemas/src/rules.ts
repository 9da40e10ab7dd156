/**
 * If/then rules keyed on one member of an object schema ("when kind is log, message is
 * required"), written as JSON Schema values whose TypeScript types keep every name and value.
 * `discriminated` reads the same rule values to type the object as a union discriminated by that
 * member, so the rules are the one source of the schema's allOf and of the union.
 */
import { Type, type Static, type TObject, type TProperties } from '@sinclair/typebox';

/** Member name → the JSON type it must have when present, e.g. `{ message: { type: 'string' } }`. */
type Shapes = Record<string, object>;

/** The `if` of a rule: member `member` is present and holds `value`. */
const holds = <D extends string, V extends string>(member: D, value: V) => ({
  type: 'object' as const,
  properties: { [member]: { const: value } } as { [P in D]: { const: V } },
  required: [member] as [D],
});

/** The members of `members` are all present, each of its JSON type. */
const present = <M extends Shapes>(members: M) => ({
  type: 'object' as const,
  properties: members,
  required: Object.keys(members) as Array<keyof M & string>,
});

/** When member `member` holds `value`, every member of `members` is present. */
export const whenRequires = <const D extends string, const V extends string, const M extends Shapes>(member: D, value: V, members: M) => ({
  if: holds(member, value),
  then: present(members),
});

/** When member `member` holds `value`, at least one member of `members` is present. */
export const whenRequiresOneOf = <const D extends string, const V extends string, const M extends Shapes>(
  member: D,
  value: V,
  members: M,
) => ({
  if: holds(member, value),
  then: {
    anyOf: Object.entries(members).map(([name, shape]) => present({ [name]: shape })) as Array<
      { [N in keyof M]: ReturnType<typeof present<Pick<M, N>>> }[keyof M]
    >,
  },
});

/** A rule as `whenRequires` and `whenRequiresOneOf` build it. */
export interface Rule<D extends string = string, V extends string = string> {
  if: { properties: { [P in D]: { const: V } } };
  then: { required: readonly string[] } | { anyOf: ReadonlyArray<{ required: readonly string[] }> };
}

/** T with the members M made required (and no longer undefined). */
type With<T, M> = Required<Pick<T, M & keyof T>>;

/** What a rule's `then` adds to T: all its members, or (anyOf) one of its sets of members. */
type Then<T, C> = C extends { anyOf: ReadonlyArray<infer B> }
  ? Each<T, B>
  : C extends { required: ReadonlyArray<infer M> }
    ? With<T, M>
    : unknown;
type Each<T, B> = B extends { required: ReadonlyArray<infer M> } ? With<T, M> : never;

/** The `then` of the rules R that apply when member D holds V; never when none does. */
type ThenWhen<R, D extends string, V> = R extends { if: { properties: { [P in D]: { const: V } } }; then: infer C } ? C : never;

/** One object type instead of an intersection, so that editors and .d.ts show its members. */
type Flat<T> = { [K in keyof T]: T[K] };

/**
 * The object type T whose member D takes one of several string values, as the union of one
 * variant per value: D narrowed to that value, and the members the rules R require for it
 * required (a value no rule names adds nothing).
 */
export type Discriminated<T, D extends string, R> = {
  [V in T[D & keyof T] & string]: [ThenWhen<R, D, V>] extends [never]
    ? Flat<Omit<T, D> & { [P in D]: V }>
    : Flat<Omit<T, D> & { [P in D]: V } & Then<T, ThenWhen<R, D, V>>>;
}[T[D & keyof T] & string];

/**
 * An object schema with the rules `rules` on member `member` as its allOf, typed as the union
 * they make of it (`Discriminated`); the JSON Schema is the object with its rules, unchanged.
 * Throws when a rule is keyed on another member, or when two rules name the same value.
 */
export function discriminated<
  P extends TProperties,
  const D extends keyof P & string,
  const R extends ReadonlyArray<Rule<D, Static<P[D]> & string>>,
>(member: D, properties: P, rules: R, options: { $id: string; title: string; description: string }) {
  const values = rules.map((rule) => (rule.if.properties as Record<string, { const: string } | undefined>)[member]?.const);
  if (values.some((v) => v === undefined) || new Set(values).size !== values.length)
    throw new Error(`${options.title}: each rule must name its own value of "${member}" (${values.join(', ')})`);
  return Type.Unsafe<Discriminated<Static<TObject<P>>, D, R[number]>>(Type.Object(properties, { ...options, allOf: rules }));
}
