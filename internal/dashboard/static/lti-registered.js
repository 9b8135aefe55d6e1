// The tool is registered: the LMS that opened this page for LTI Dynamic
// Registration is told so (its close message), and closes it.
(window.opener || window.parent).postMessage({ subject: "org.imsglobal.lti.close" }, "*");
