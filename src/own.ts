/**
 * Reading and writing plain objects keyed by ids a client may choose (DESIGN §4 "security": client-chosen
 * keys never index plain objects). Read models are JSON, so their maps stay plain objects; every lookup goes
 * through `own` (an own property or undefined: `constructor`, `toString`, `__proto__`, `hasOwnProperty` are
 * never found on the prototype) and every write through `setOwn` (defines the property, so `__proto__` is a
 * key like any other and never replaces the prototype).
 */

/** The own property `key` of `o`, or undefined. */
export function own<T>(o: Readonly<Record<string, T>> | null | undefined, key: string): T | undefined {
  return o !== null && o !== undefined && Object.hasOwn(o, key) ? o[key] : undefined;
}

/** Sets the own property `key` of `o` (a data property, whatever the key). */
export function setOwn<T>(o: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(o, key, { value, writable: true, enumerable: true, configurable: true });
}
