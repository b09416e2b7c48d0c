// Prepares a call context for hardening before any script runs in it (see lockdown.rs for why):
// runs once per context, as a module (strict), with nothing of a script's in reach yet, and
// exports the roots the host then freezes everything reachable from.

const { defineProperty, freeze, getOwnPropertyDescriptor: describe, getPrototypeOf } = Object;
const { ownKeys } = Reflect;

// Accessors that write the context's own state rather than an object's: freezing keeps a
// setter working, so they go.
delete Error.prepareStackTrace;
delete Error.stackTraceLimit;

// Writable data properties of a built-in prototype that scripts commonly assign on their own
// objects (`this.name = "MyError"`, `Foo.prototype.toString = …`): once the prototype is frozen,
// such an assignment would throw ("override mistake"). Each becomes an accessor that defines
// the property on the object assigned to and refuses only the prototype itself.
function assignable(prototype, key) {
  const found = describe(prototype, key);
  if (found === undefined || !("value" in found) || !found.writable) return;
  const value = found.value;
  defineProperty(prototype, key, {
    get() {
      return value;
    },
    set(next) {
      if (this === prototype) {
        throw new TypeError(`cannot assign to '${String(key)}' of a built-in prototype`);
      }
      defineProperty(this, key, { value: next, writable: true, enumerable: true, configurable: true });
    },
    enumerable: found.enumerable,
    configurable: false,
  });
}
for (const key of ownKeys(globalThis)) {
  const constructor = describe(globalThis, key).value;
  if (typeof constructor !== "function") continue;
  // `Function.prototype` is itself a function.
  const prototype = describe(constructor, "prototype")?.value;
  if ((typeof prototype !== "object" && typeof prototype !== "function") || prototype === null) {
    continue;
  }
  for (const name of ["constructor", "toString", "name", "message"]) assignable(prototype, name);
}
for (const name of ["valueOf", "toLocaleString"]) assignable(Object.prototype, name);

// Intrinsics no property path from the global object reaches, found the way a script would
// find them.
const hidden = [
  getPrototypeOf(function* () {}),
  getPrototypeOf(async function* () {}),
  getPrototypeOf(async function () {}),
  getPrototypeOf(async () => {}),
  getPrototypeOf([][Symbol.iterator]()),
  getPrototypeOf(new Map()[Symbol.iterator]()),
  getPrototypeOf(new Set()[Symbol.iterator]()),
  getPrototypeOf(""[Symbol.iterator]()),
  getPrototypeOf(/a/[Symbol.matchAll]("")),
  getPrototypeOf(Int8Array),
  getPrototypeOf([].values().map((x) => x)),
  getPrototypeOf(Iterator.from({ next() {} })),
  getPrototypeOf(Iterator.concat([])),
  describe((function () { return arguments; })(), "callee").get,
];

// The roots of what the calls share: the host freezes everything reachable from them.
export default [globalThis, ...hidden];
