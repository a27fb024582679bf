// Package junitxml is the JUnit XML that CI test reporters read (GitLab,
// Jenkins, GitHub): the elements both a run's report and a sweep's write.
package junitxml

import (
	"encoding/xml"
	"io"
)

// Suites is the document: a testsuites element.
type Suites struct {
	XMLName  xml.Name `xml:"testsuites"`
	Name     string   `xml:"name,attr"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Time     string   `xml:"time,attr"`
	Suites   []Suite  `xml:"testsuite"`
}

// Suite is one testsuite.
type Suite struct {
	Name       string     `xml:"name,attr"`
	Tests      int        `xml:"tests,attr"`
	Failures   int        `xml:"failures,attr"`
	Errors     int        `xml:"errors,attr"`
	Skipped    int        `xml:"skipped,attr"`
	Time       string     `xml:"time,attr"`
	Properties []Property `xml:"properties>property"`
	Cases      []Case     `xml:"testcase"`
	SystemOut  string     `xml:"system-out,omitempty"`
}

// Property is a name and value of a suite.
type Property struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// Case is one testcase; a Failure is a broken expectation, an Error a
// run that does not count.
type Case struct {
	Name      string   `xml:"name,attr"`
	Classname string   `xml:"classname,attr"`
	Time      string   `xml:"time,attr"`
	Failure   *Problem `xml:"failure"`
	Error     *Problem `xml:"error"`
}

// Problem is a failure or an error: its message, type and text.
type Problem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// Write writes all as an indented XML document ending in a newline.
func Write(w io.Writer, all Suites) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(all); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
