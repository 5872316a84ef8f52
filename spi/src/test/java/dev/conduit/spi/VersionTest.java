package dev.conduit.spi;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;

class VersionTest {

    @ParameterizedTest
    @CsvSource({
            "1,1,0,0,''",
            "1.2,1,2,0,''",
            "1.2.3,1,2,3,''",
            "0.0.0,0,0,0,''",
            "10.20.30-SNAPSHOT,10,20,30,SNAPSHOT",
            "1-rc1,1,0,0,rc1",
            "2.0.0-rc-2,2,0,0,rc-2"})
    void parsesOneToThreeNumbersAndAQualifier(String text, int major, int minor, int patch, String qualifier) {
        assertThat(Version.parse(text)).isEqualTo(new Version(major, minor, patch, qualifier));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "a", "1.", ".1", "1..2", "1.2.3.4", "1.2.3-", "-1", "+1", "1.+2", "1.-2", "1.2.x", " 1.2",
            "1.2 ", "v1.2", "99999999999", "1.2.3_4", "\u0661.\u0662.\u0663", "1.\u0968", "\uFF11.0"})
    void refusesMalformedTextNamingItAndTheExpectedForm(String text) {
        assertThatIllegalArgumentException().isThrownBy(() -> Version.parse(text))
                .withMessageContaining("'" + text + "'")
                .withMessageContaining("major[.minor[.patch]][-qualifier]");
    }

    @Test
    void refusesNull() {
        assertThatNullPointerException().isThrownBy(() -> Version.parse(null));
    }

    @Test
    void refusesNegativeNumbersAndNullQualifierInTheConstructor() {
        assertThatIllegalArgumentException().isThrownBy(() -> new Version(-1, 0, 0, ""));
        assertThatIllegalArgumentException().isThrownBy(() -> new Version(1, -1, 0, ""));
        assertThatIllegalArgumentException().isThrownBy(() -> new Version(1, 0, -1, ""));
        assertThatNullPointerException().isThrownBy(() -> new Version(1, 0, 0, null));
    }

    @Test
    void ordersNumericallyNotAlphabetically() {
        assertThat(Version.parse("1.10.0")).isGreaterThan(Version.parse("1.9.0"));
        assertThat(Version.parse("1.0.10")).isGreaterThan(Version.parse("1.0.9"));
        assertThat(Version.parse("10.0")).isGreaterThan(Version.parse("9.99.99"));
    }

    @Test
    void aQualifiedVersionOrdersBeforeTheReleaseAndQualifiersOrderAmongThemselves() {
        assertThat(Version.parse("1.2.0-SNAPSHOT")).isLessThan(Version.parse("1.2.0"));
        assertThat(Version.parse("1.2.0")).isGreaterThan(Version.parse("1.2.0-rc1"));
        assertThat(Version.parse("1.2.0-alpha")).isLessThan(Version.parse("1.2.0-beta"));
        assertThat(Version.parse("1.2.0-rc1")).isGreaterThan(Version.parse("1.1.9"));
    }

    /**
     * Qualifiers order by their numbers where they have them: as text, {@code rc10} came before
     * {@code rc9}, so that of two plugins with one name the older was kept.
     */
    @Test
    void qualifiersOrderByTheirNumbers() {
        assertThat(Version.parse("2.0.0-rc9")).isLessThan(Version.parse("2.0.0-rc10"));
        assertThat(Version.parse("2.0.0-rc.2")).isLessThan(Version.parse("2.0.0-rc.10"));
        assertThat(Version.parse("2.0.0-rc-2")).isLessThan(Version.parse("2.0.0-rc-10"));
        assertThat(Version.parse("2.0.0-beta2")).isLessThan(Version.parse("2.0.0-rc1"));
        assertThat(Version.parse("2.0.0-rc1")).isLessThan(Version.parse("2.0.0-rc1a"));
        assertThat(Version.parse("2.0.0-1")).isLessThan(Version.parse("2.0.0-alpha"));
        assertThat(Version.parse("2.0.0-rc01")).isNotEqualByComparingTo(Version.parse("2.0.0-rc1"))
                .isGreaterThan(Version.parse("2.0.0-rc0"));
    }

    @Test
    void equalVersionsCompareAsZeroWhateverTheirSpelling() {
        assertThat(Version.parse("1")).isEqualByComparingTo(Version.parse("1.0.0")).isEqualTo(Version.parse("1.0"));
        assertThat(Version.parse("1.0.0-x")).isEqualByComparingTo(Version.parse("1-x"));
    }

    @Test
    void sortsAListAscending() {
        List<Version> versions = new ArrayList<>(List.of(Version.parse("2.0"), Version.parse("1.0.0-SNAPSHOT"),
                Version.parse("1.10"), Version.parse("1.0"), Version.parse("1.2")));
        Collections.sort(versions);
        assertThat(versions).extracting(Version::toString)
                .containsExactly("1.0.0-SNAPSHOT", "1.0.0", "1.2.0", "1.10.0", "2.0.0");
    }

    @ParameterizedTest
    @ValueSource(strings = {"1.2.3", "0.1.0-SNAPSHOT", "3.0.0-rc-1"})
    void toStringRoundTrips(String text) {
        assertThat(Version.parse(text)).hasToString(text);
        assertThat(Version.parse(Version.parse(text).toString())).isEqualTo(Version.parse(text));
    }

    @Test
    void theSpiVersionConstantParses() {
        assertThat(Version.parse(ConduitPlugin.SPI_VERSION).major()).isEqualTo(1);
    }
}
