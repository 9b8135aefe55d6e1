package lti

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"groupanalytics/internal/analytics"
)

// Tool is what the tool tells a platform of itself when it registers.
type Tool struct {
	Name, Description                     string
	LoginURL, LaunchURL, JWKSURL, LogoURL string
}

// platformConfiguration is what a platform's OpenID configuration says,
// as LTI Dynamic Registration reads it.
type platformConfiguration struct {
	Issuer          string   `json:"issuer"`
	AuthURL         string   `json:"authorization_endpoint"`
	TokenURL        string   `json:"token_endpoint"`
	JWKSURL         string   `json:"jwks_uri"`
	RegistrationURL string   `json:"registration_endpoint"`
	Scopes          []string `json:"scopes_supported"`
	LTI             struct {
		ProductFamily string `json:"product_family_code"`
		Messages      []struct {
			Type string `json:"type"`
		} `json:"messages_supported"`
	} `json:"https://purl.imsglobal.org/spec/lti-platform-configuration"`
}

// Register registers the tool with a platform by LTI Dynamic Registration:
// it reads the platform's configuration at configURL (its issuer must be
// of the configuration's site), sends the tool's (OpenID Connect Dynamic
// Client Registration, with the LTI tool configuration: its login,
// launch and keys, a course navigation link, deep linking where the
// platform takes it, Names and Role Provisioning where it offers it),
// with the registration token the platform gave, and returns the
// platform as the answer makes it: its client id, and its deployment if
// it names one.
func (v *Verifier) Register(ctx context.Context, configURL, registrationToken string, tool Tool) (analytics.LTIPlatform, error) {
	if err := checkPlatformURL("openid_configuration", configURL); err != nil {
		return analytics.LTIPlatform{}, refuse("The LMS's configuration address is not one this tool reads (https)", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, configURL, nil)
	if err != nil {
		return analytics.LTIPlatform{}, refuse("The LMS's configuration could not be read", err)
	}
	var config platformConfiguration
	if err := v.getJSON(req, &config); err != nil {
		return analytics.LTIPlatform{}, refuse("The LMS's configuration could not be read", err)
	}
	if err := config.check(configURL); err != nil {
		return analytics.LTIPlatform{}, refuse("The LMS's configuration is not one this tool can register with", err)
	}
	body, err := json.Marshal(config.registration(tool))
	if err != nil {
		return analytics.LTIPlatform{}, err
	}
	req, err = http.NewRequestWithContext(ctx, http.MethodPost, config.RegistrationURL, bytes.NewReader(body))
	if err != nil {
		return analytics.LTIPlatform{}, refuse("The LMS could not be asked to register this tool", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if registrationToken != "" {
		req.Header.Set("Authorization", "Bearer "+registrationToken)
	}
	var answer struct {
		ClientID string `json:"client_id"`
		Tool     struct {
			DeploymentID string `json:"deployment_id"`
		} `json:"https://purl.imsglobal.org/spec/lti-tool-configuration"`
	}
	if err := v.getJSON(req, &answer); err != nil {
		return analytics.LTIPlatform{}, refuse("The LMS did not register this tool", err)
	}
	if answer.ClientID == "" {
		return analytics.LTIPlatform{}, refuse("The LMS did not register this tool", fmt.Errorf("no client_id in its answer"))
	}
	p := analytics.LTIPlatform{Issuer: config.Issuer, ClientID: answer.ClientID, AuthURL: config.AuthURL, TokenURL: config.TokenURL,
		JWKSURL: config.JWKSURL, Name: cmp.Or(config.LTI.ProductFamily, "lms")}
	if issuer, err := url.Parse(config.Issuer); err == nil {
		p.Name += " (" + issuer.Host + ")"
	}
	if answer.Tool.DeploymentID != "" {
		p.DeploymentIDs = []string{answer.Tool.DeploymentID}
	}
	return p, nil
}

// check checks a platform's configuration read from configURL: an issuer
// of the same site (so that a configuration cannot speak for another
// platform), and every endpoint the tool needs, https (http on
// loopback).
func (c platformConfiguration) check(configURL string) error {
	for _, e := range []struct{ name, value string }{{"issuer", c.Issuer}, {"authorization_endpoint", c.AuthURL},
		{"token_endpoint", c.TokenURL}, {"jwks_uri", c.JWKSURL}, {"registration_endpoint", c.RegistrationURL}} {
		if err := checkPlatformURL(e.name, e.value); err != nil {
			return err
		}
	}
	issuer, _ := url.Parse(c.Issuer)
	config, _ := url.Parse(configURL)
	if issuer.Host != config.Host {
		return fmt.Errorf("issuer %q is not of the configuration's site %q", c.Issuer, config.Host)
	}
	return nil
}

// registration is the tool's client registration for this platform.
func (c platformConfiguration) registration(tool Tool) map[string]any {
	launchHost := ""
	if u, err := url.Parse(tool.LaunchURL); err == nil {
		launchHost = u.Host
	}
	messages := []map[string]any{{"type": MessageLaunch, "target_link_uri": tool.LaunchURL, "label": "Usage",
		"placements": []string{"course_navigation"}, "roles": []string{roleInstructor, roleTA, roleInstitutional, roleCourseAdmin}}}
	scope := ""
	for _, m := range c.LTI.Messages {
		if m.Type == MessageDeepLink {
			messages = append(messages, map[string]any{"type": MessageDeepLink, "target_link_uri": tool.LaunchURL, "label": "Usage report link",
				"placements": []string{"link_selection"}, "roles": []string{roleInstructor, roleTA, roleInstitutional, roleCourseAdmin}})
		}
	}
	if len(c.Scopes) == 0 || slices.Contains(c.Scopes, NRPSScope) {
		scope = NRPSScope
	}
	return map[string]any{
		"application_type": "web", "response_types": []string{"id_token"}, "grant_types": []string{"implicit", "client_credentials"},
		"initiate_login_uri": tool.LoginURL, "redirect_uris": []string{tool.LaunchURL}, "client_name": tool.Name, "jwks_uri": tool.JWKSURL,
		"logo_uri": tool.LogoURL, "token_endpoint_auth_method": "private_key_jwt", "scope": scope,
		"https://purl.imsglobal.org/spec/lti-tool-configuration": map[string]any{
			"domain": launchHost, "description": tool.Description, "target_link_uri": tool.LaunchURL,
			"claims": []string{"iss", "sub", "name", "email"}, "messages": messages,
		},
	}
}
