// The platform's storage (LTI Client Side postMessages), where the browser
// keeps no cookie of the tool inside the LMS's page: a login keeps its
// secret there (lti.put_data), and a launch's page reads it back
// (lti.get_data) to open its session's sealed token. Messages go to the
// frame the LMS named (lti_storage_target) and are taken from the LMS's
// origin alone.
const ltiStorage = (() => {
  function frameOf(target) {
    const platform = window.opener || window.parent;
    if (platform === window) {
      return null;
    }
    return target === "_parent" ? platform : platform.frames[target];
  }
  function ask(target, origin, message) {
    return new Promise((resolve, reject) => {
      const frame = frameOf(target);
      if (!frame) {
        reject(new Error("this page is not in the LMS's"));
        return;
      }
      const id = crypto.randomUUID();
      const timer = setTimeout(() => {
        removeEventListener("message", answered);
        reject(new Error("the LMS's storage did not answer"));
      }, 3000);
      function answered(ev) {
        if (ev.origin !== origin || ev.data?.message_id !== id || ev.data?.subject !== `${message.subject}.response`) {
          return;
        }
        clearTimeout(timer);
        removeEventListener("message", answered);
        if (ev.data.error) {
          reject(new Error(ev.data.error.message || ev.data.error.code || "the LMS's storage refused"));
        } else {
          resolve(ev.data);
        }
      }
      addEventListener("message", answered);
      frame.postMessage({ ...message, message_id: id }, origin);
    });
  }
  return {
    put: (target, origin, key, value) => ask(target, origin, { subject: "lti.put_data", key, value }),
    get: async (target, origin, key) => (await ask(target, origin, { subject: "lti.get_data", key })).value,
  };
})();

// ltiUnseal opens a launch's sealed session token (its page's data:
// sealed, key, target, origin) with the secret its login kept in the
// platform's storage: the token XORed with SHA-256(SHA-256(secret) ||
// "groupanalytics lti seal").
async function ltiUnseal({ sealed, key, target, origin }) {
  const secret = await ltiStorage.get(target, origin, key);
  if (typeof secret !== "string" || secret === "") {
    throw new Error("the LMS's storage holds nothing of this launch");
  }
  const encoder = new TextEncoder();
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(secret)));
  const context = encoder.encode("groupanalytics lti seal");
  const input = new Uint8Array(hash.length + context.length);
  input.set(hash);
  input.set(context, hash.length);
  const pad = new Uint8Array(await crypto.subtle.digest("SHA-256", input));
  const bytes = sealed.match(/../g).map((pair, i) => parseInt(pair, 16) ^ pad[i]);
  const token = String.fromCharCode(...bytes);
  if (!/^gal_[A-Z0-9]+$/.test(token)) {
    throw new Error("this launch was begun in another browser");
  }
  return token;
}
