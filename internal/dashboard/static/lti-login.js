// A launch's login in the LMS's page: its secret kept in the LMS's storage,
// then on to the LMS. Where neither that storage nor a cookie works, the
// launch cannot be tied to this browser here: it is offered in a new
// window, where the browser keeps the tool's cookie.
(async () => {
  const login = document.getElementById("lti-login").dataset;
  try {
    await ltiStorage.put(login.target, login.origin, login.key, login.value);
  } catch {
    if (window.top !== window && !document.cookie.split("; ").includes("ga_lti_probe=1")) {
      document.getElementById("lti-new-window").hidden = false;
      return;
    }
  }
  location.replace(login.auth);
})();
